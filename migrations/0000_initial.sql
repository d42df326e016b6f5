CREATE TABLE `activity_logs` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`created_at` integer NOT NULL,
	`actor_key_id` integer,
	`actor_name` text NOT NULL,
	`action` text NOT NULL,
	`target_type` text,
	`target_id` text,
	`method` text,
	`path` text,
	`ip` text,
	`status` integer NOT NULL,
	`outcome` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `activity_logs_created_at_idx` ON `activity_logs` (`created_at`);--> statement-breakpoint
CREATE INDEX `activity_logs_actor_idx` ON `activity_logs` (`actor_key_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `activity_logs_action_idx` ON `activity_logs` (`action`,`created_at`);--> statement-breakpoint
CREATE INDEX `activity_logs_target_idx` ON `activity_logs` (`target_type`,`target_id`);--> statement-breakpoint
CREATE TABLE `api_keys` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`name` text NOT NULL,
	`lookup_id` text NOT NULL,
	`secret_hash` text NOT NULL,
	`role_id` integer NOT NULL,
	`rate_limit` integer,
	`allowed_ips` text NOT NULL,
	`status` text NOT NULL,
	`last_used_at` integer,
	`last_used_ip` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`deleted_at` integer,
	FOREIGN KEY (`role_id`) REFERENCES `roles`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_lookup_id_unique` ON `api_keys` (`lookup_id`);--> statement-breakpoint
CREATE INDEX `api_keys_role_id_idx` ON `api_keys` (`role_id`);--> statement-breakpoint
CREATE TABLE `roles` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`name` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`permissions` text NOT NULL,
	`builtin` integer DEFAULT false NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `roles_name_unique` ON `roles` (lower("name"));--> statement-breakpoint
CREATE TABLE `events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`kind` text NOT NULL,
	`created_at` integer NOT NULL,
	`contact_id` integer,
	`list_id` integer,
	`message_id` text,
	`recipient` text,
	`broadcast_id` integer,
	`bridge_id` integer,
	`actor_key_id` integer,
	`data` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `events_kind_created_idx` ON `events` (`kind`,`created_at`);--> statement-breakpoint
CREATE INDEX `events_created_idx` ON `events` (`created_at`);--> statement-breakpoint
CREATE TABLE `system_state` (
	`key` text PRIMARY KEY NOT NULL,
	`value` text NOT NULL,
	`updated_at` integer NOT NULL
);
