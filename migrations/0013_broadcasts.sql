CREATE TABLE `broadcast_counts` (
	`broadcast_id` integer NOT NULL,
	`version_id` integer DEFAULT 0 NOT NULL,
	`metric` text NOT NULL,
	`n` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`broadcast_id`, `version_id`, `metric`),
	FOREIGN KEY (`broadcast_id`) REFERENCES `broadcasts`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `broadcast_recipients` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`broadcast_id` integer NOT NULL,
	`contact_id` integer NOT NULL,
	`list_id` integer NOT NULL,
	`email` text NOT NULL,
	`version_id` integer,
	`sample` integer DEFAULT false NOT NULL,
	`state` text NOT NULL,
	`due_at` integer,
	`reason` text,
	`message_id` text,
	`opened_at` integer,
	`clicked_at` integer,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`broadcast_id`) REFERENCES `broadcasts`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `broadcast_recipients_email_unique` ON `broadcast_recipients` (`broadcast_id`,`email`);--> statement-breakpoint
CREATE INDEX `broadcast_recipients_state_idx` ON `broadcast_recipients` (`broadcast_id`,`state`);--> statement-breakpoint
CREATE INDEX `broadcast_recipients_message_idx` ON `broadcast_recipients` (`message_id`) WHERE message_id IS NOT NULL;--> statement-breakpoint
CREATE TABLE `broadcast_versions` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`broadcast_id` integer NOT NULL,
	`name` text NOT NULL,
	`subject` text,
	`from_name` text,
	`html` text,
	`text` text,
	`template_id` integer,
	`template_version_id` integer,
	`send_at` integer,
	`weight` integer DEFAULT 1 NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`broadcast_id`) REFERENCES `broadcasts`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`template_id`) REFERENCES `templates`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE INDEX `broadcast_versions_broadcast_idx` ON `broadcast_versions` (`broadcast_id`);--> statement-breakpoint
CREATE TABLE `broadcasts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`name` text NOT NULL,
	`status` text NOT NULL,
	`status_reason` text,
	`from_address` text NOT NULL,
	`reply_to` text,
	`subject` text NOT NULL,
	`html` text,
	`text` text,
	`template_id` integer,
	`template_version_id` integer,
	`list_ids` text DEFAULT '[]' NOT NULL,
	`segment_id` integer,
	`exclude_list_ids` text DEFAULT '[]' NOT NULL,
	`exclude_segment_ids` text DEFAULT '[]' NOT NULL,
	`track_opens` integer DEFAULT true NOT NULL,
	`track_clicks` integer DEFAULT true NOT NULL,
	`pool_id` integer,
	`bridge_id` integer,
	`tags` text DEFAULT '[]' NOT NULL,
	`send_rate_per_minute` integer,
	`send_window` text,
	`timezone` text,
	`version_mode` text DEFAULT 'rotation' NOT NULL,
	`split_test` text,
	`split_phase` text,
	`winner_version_id` integer,
	`max_bounce_rate` text,
	`max_complaint_rate` text,
	`archive` integer DEFAULT false NOT NULL,
	`archive_id` text NOT NULL,
	`source_broadcast_id` integer,
	`send_at` integer,
	`started_at` integer,
	`finished_at` integer,
	`prepare_cursor` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`template_id`) REFERENCES `templates`(`id`) ON UPDATE no action ON DELETE set null,
	FOREIGN KEY (`segment_id`) REFERENCES `segments`(`id`) ON UPDATE no action ON DELETE set null,
	FOREIGN KEY (`pool_id`) REFERENCES `ip_pools`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `broadcasts_archive_id_unique` ON `broadcasts` (`archive_id`);--> statement-breakpoint
CREATE INDEX `broadcasts_status_idx` ON `broadcasts` (`status`,`send_at`);--> statement-breakpoint
ALTER TABLE `messages` ADD `broadcast_id` integer;