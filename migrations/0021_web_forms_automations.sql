CREATE TABLE `automation_versions` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`automation_id` integer NOT NULL,
	`version` integer NOT NULL,
	`graph` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`automation_id`) REFERENCES `automations`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `automation_versions_number_unique` ON `automation_versions` (`automation_id`,`version`);--> statement-breakpoint
CREATE TABLE `automations` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`kind` text NOT NULL,
	`name` text NOT NULL,
	`status` text NOT NULL,
	`list_ids` text NOT NULL,
	`event_name` text,
	`event_filter` text,
	`reentry` text NOT NULL,
	`exit_conditions` text NOT NULL,
	`goals` text NOT NULL,
	`timezone` text,
	`current_version_id` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `automations_event_idx` ON `automations` (`event_name`);--> statement-breakpoint
CREATE TABLE `custom_events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`name` text NOT NULL,
	`contact_id` integer,
	`email` text NOT NULL,
	`properties` text NOT NULL,
	`occurred_at` integer NOT NULL,
	`idempotency_key` text,
	`api_key_id` integer,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`contact_id`) REFERENCES `contacts`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE INDEX `custom_events_email_name_idx` ON `custom_events` (`email`,`name`);--> statement-breakpoint
CREATE UNIQUE INDEX `custom_events_idempotency_unique` ON `custom_events` (`api_key_id`,`idempotency_key`);--> statement-breakpoint
CREATE TABLE `automation_enrollments` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`automation_id` integer NOT NULL,
	`version_id` integer NOT NULL,
	`contact_id` integer NOT NULL,
	`email` text NOT NULL,
	`state` text NOT NULL,
	`step_id` text,
	`trigger_event_id` integer,
	`wait_event` text,
	`wait_filter` text,
	`wait_since` integer,
	`reason` text,
	`started_at` integer NOT NULL,
	`finished_at` integer,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`automation_id`) REFERENCES `automations`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`version_id`) REFERENCES `automation_versions`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`contact_id`) REFERENCES `contacts`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `automation_enrollments_automation_email_idx` ON `automation_enrollments` (`automation_id`,`email`);--> statement-breakpoint
CREATE INDEX `automation_enrollments_email_state_idx` ON `automation_enrollments` (`email`,`state`);--> statement-breakpoint
CREATE INDEX `automation_enrollments_contact_idx` ON `automation_enrollments` (`contact_id`);--> statement-breakpoint
CREATE INDEX `automation_enrollments_automation_state_idx` ON `automation_enrollments` (`automation_id`,`state`,`step_id`);--> statement-breakpoint
CREATE TABLE `automation_step_runs` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`enrollment_id` integer NOT NULL,
	`automation_id` integer NOT NULL,
	`step_id` text NOT NULL,
	`attempt` integer NOT NULL,
	`outcome` text,
	`message_id` text,
	`detail` text,
	`created_at` integer NOT NULL,
	`completed_at` integer,
	FOREIGN KEY (`enrollment_id`) REFERENCES `automation_enrollments`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `automation_step_runs_unique` ON `automation_step_runs` (`enrollment_id`,`step_id`,`attempt`);--> statement-breakpoint
CREATE INDEX `automation_step_runs_automation_step_idx` ON `automation_step_runs` (`automation_id`,`step_id`);--> statement-breakpoint
CREATE TABLE `automation_wakeups` (
	`enrollment_id` integer PRIMARY KEY NOT NULL,
	`automation_id` integer NOT NULL,
	`due_at` integer NOT NULL,
	`claimed` integer DEFAULT 0 NOT NULL,
	FOREIGN KEY (`enrollment_id`) REFERENCES `automation_enrollments`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `automation_wakeups_due_idx` ON `automation_wakeups` (`due_at`);--> statement-breakpoint
CREATE TABLE `consents` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`contact_id` integer NOT NULL,
	`form_id` integer,
	`text` text NOT NULL,
	`version` integer NOT NULL,
	`ip` text,
	`user_agent` text,
	`created_at` integer NOT NULL,
	`confirmed_at` integer,
	FOREIGN KEY (`contact_id`) REFERENCES `contacts`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`form_id`) REFERENCES `web_forms`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE INDEX `consents_contact_idx` ON `consents` (`contact_id`);--> statement-breakpoint
CREATE INDEX `consents_form_idx` ON `consents` (`form_id`);--> statement-breakpoint
CREATE TABLE `web_form_submissions` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`form_id` integer NOT NULL,
	`email` text NOT NULL,
	`data` text NOT NULL,
	`consent_text` text NOT NULL,
	`consent_version` integer NOT NULL,
	`ip` text,
	`user_agent` text,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`confirmed_at` integer,
	FOREIGN KEY (`form_id`) REFERENCES `web_forms`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `web_form_submissions_expires_idx` ON `web_form_submissions` (`expires_at`);--> statement-breakpoint
CREATE TABLE `web_forms` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`public_id` text NOT NULL,
	`name` text NOT NULL,
	`list_ids` text NOT NULL,
	`fields` text NOT NULL,
	`consent_text` text NOT NULL,
	`consent_version` integer DEFAULT 1 NOT NULL,
	`success_message` text NOT NULL,
	`success_url` text,
	`failure_message` text NOT NULL,
	`failure_url` text,
	`double_opt_in` integer DEFAULT true NOT NULL,
	`allowed_origins` text NOT NULL,
	`confirmation_from` text,
	`confirmation_subject` text NOT NULL,
	`welcome_drip_id` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`welcome_drip_id`) REFERENCES `automations`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `web_forms_public_id_unique` ON `web_forms` (`public_id`);