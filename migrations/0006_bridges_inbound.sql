CREATE TABLE `bridge_counters` (
	`bridge_id` integer PRIMARY KEY NOT NULL,
	`accepted` integer DEFAULT 0 NOT NULL,
	`delivered` integer DEFAULT 0 NOT NULL,
	`bounced` integer DEFAULT 0 NOT NULL,
	`complained` integer DEFAULT 0 NOT NULL,
	FOREIGN KEY (`bridge_id`) REFERENCES `bridges`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `bridge_usage` (
	`bridge_id` integer NOT NULL,
	`hour` integer NOT NULL,
	`count` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`bridge_id`, `hour`),
	FOREIGN KEY (`bridge_id`) REFERENCES `bridges`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `bridges` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`name` text NOT NULL,
	`smtp_username` text NOT NULL,
	`smtp_password_hash` text NOT NULL,
	`api_key_id` integer,
	`domains` text NOT NULL,
	`pool_id` integer,
	`node_id` integer,
	`hourly_quota` integer,
	`daily_quota` integer,
	`allowed_ips` text NOT NULL,
	`track_opens` integer DEFAULT false NOT NULL,
	`track_clicks` integer DEFAULT false NOT NULL,
	`active` integer DEFAULT true NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`api_key_id`) REFERENCES `api_keys`(`id`) ON UPDATE no action ON DELETE set null,
	FOREIGN KEY (`pool_id`) REFERENCES `ip_pools`(`id`) ON UPDATE no action ON DELETE set null,
	FOREIGN KEY (`node_id`) REFERENCES `sending_nodes`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `bridges_name_unique` ON `bridges` (`name`);--> statement-breakpoint
CREATE UNIQUE INDEX `bridges_smtp_username_unique` ON `bridges` (`smtp_username`);--> statement-breakpoint
CREATE TABLE `dmarc_records` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`report_id` integer NOT NULL,
	`source_ip` text NOT NULL,
	`count` integer NOT NULL,
	`disposition` text NOT NULL,
	`dkim` text NOT NULL,
	`spf` text NOT NULL,
	`header_from` text NOT NULL,
	FOREIGN KEY (`report_id`) REFERENCES `dmarc_reports`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `dmarc_records_report_idx` ON `dmarc_records` (`report_id`);--> statement-breakpoint
CREATE TABLE `dmarc_reports` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`domain` text NOT NULL,
	`org_name` text NOT NULL,
	`report_id` text NOT NULL,
	`begin_at` integer NOT NULL,
	`end_at` integer NOT NULL,
	`policy` text NOT NULL,
	`received_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `dmarc_reports_org_report_unique` ON `dmarc_reports` (`org_name`,`report_id`);--> statement-breakpoint
CREATE INDEX `dmarc_reports_domain_idx` ON `dmarc_reports` (`domain`,`begin_at`);--> statement-breakpoint
CREATE TABLE `feedback_loop_accounts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`name` text NOT NULL,
	`kind` text NOT NULL,
	`address` text,
	`imap_host` text,
	`imap_port` integer,
	`imap_tls` integer,
	`imap_username` text,
	`imap_password` text,
	`imap_mailbox` text,
	`poll_interval_seconds` integer,
	`last_polled_at` integer,
	`last_error` text,
	`active` integer DEFAULT true NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `feedback_loop_accounts_name_unique` ON `feedback_loop_accounts` (`name`);--> statement-breakpoint
CREATE TABLE `inbound_messages` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`received_at` integer NOT NULL,
	`remote_ip` text,
	`mail_from` text NOT NULL,
	`rcpt_to` text NOT NULL,
	`kind` text NOT NULL,
	`outcome` text NOT NULL,
	`message_id` text,
	`recipient` text,
	`detail` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `inbound_messages_received_idx` ON `inbound_messages` (`received_at`);--> statement-breakpoint
ALTER TABLE `messages` ADD `bridge_id` integer;--> statement-breakpoint
CREATE INDEX `events_message_idx` ON `events` (`message_id`);