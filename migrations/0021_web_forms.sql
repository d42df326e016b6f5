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
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `web_forms_public_id_unique` ON `web_forms` (`public_id`);