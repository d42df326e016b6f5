CREATE TABLE `idempotency_keys` (
	`api_key_id` integer NOT NULL,
	`key` text NOT NULL,
	`request_hash` text NOT NULL,
	`response_status` integer NOT NULL,
	`response_body` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`api_key_id`, `key`)
);
--> statement-breakpoint
CREATE INDEX `idempotency_keys_created_idx` ON `idempotency_keys` (`created_at`);--> statement-breakpoint
CREATE TABLE `ip_pool_members` (
	`pool_id` integer NOT NULL,
	`ip_id` integer NOT NULL,
	`weight` integer DEFAULT 1 NOT NULL,
	PRIMARY KEY(`pool_id`, `ip_id`),
	FOREIGN KEY (`pool_id`) REFERENCES `ip_pools`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`ip_id`) REFERENCES `ips`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `ip_pools` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`name` text NOT NULL,
	`is_default` integer DEFAULT false NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `ip_pools_name_unique` ON `ip_pools` (`name`);--> statement-breakpoint
CREATE TABLE `ips` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`address` text NOT NULL,
	`hostname` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `ips_address_unique` ON `ips` (`address`);--> statement-breakpoint
CREATE TABLE `message_recipients` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`message_id` text NOT NULL,
	`address` text NOT NULL,
	`domain` text NOT NULL,
	`kind` text NOT NULL,
	`state` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer,
	`lease_until` integer,
	`last_code` integer,
	`last_enhanced` text,
	`last_response` text,
	`last_class` text,
	`last_ip` text,
	`last_mx` text,
	`suppression` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`finished_at` integer,
	FOREIGN KEY (`message_id`) REFERENCES `messages`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `message_recipients_message_idx` ON `message_recipients` (`message_id`);--> statement-breakpoint
CREATE INDEX `message_recipients_due_idx` ON `message_recipients` (`next_attempt_at`) WHERE state IN ('queued', 'deferred');--> statement-breakpoint
CREATE INDEX `message_recipients_leased_idx` ON `message_recipients` (`lease_until`) WHERE state = 'sending';--> statement-breakpoint
CREATE TABLE `messages` (
	`id` text PRIMARY KEY NOT NULL,
	`api_key_id` integer,
	`source` text NOT NULL,
	`mail_from` text NOT NULL,
	`from_address` text NOT NULL,
	`subject` text NOT NULL,
	`tags` text DEFAULT '[]' NOT NULL,
	`message_id_header` text NOT NULL,
	`domain_id` integer,
	`pool_id` integer,
	`node_id` integer,
	`template_id` integer,
	`template_version_id` integer,
	`raw` blob NOT NULL,
	`size` integer NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`domain_id`) REFERENCES `sending_domains`(`id`) ON UPDATE no action ON DELETE set null,
	FOREIGN KEY (`pool_id`) REFERENCES `ip_pools`(`id`) ON UPDATE no action ON DELETE set null,
	FOREIGN KEY (`node_id`) REFERENCES `sending_nodes`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE INDEX `messages_created_idx` ON `messages` (`created_at`);--> statement-breakpoint
CREATE TABLE `sending_domains` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`name` text NOT NULL,
	`status` text NOT NULL,
	`dkim_selector` text NOT NULL,
	`dkim_private_key` text NOT NULL,
	`dkim_public_key` text NOT NULL,
	`return_path_host` text NOT NULL,
	`pool_id` integer,
	`records_state` text,
	`verified_at` integer,
	`checked_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`pool_id`) REFERENCES `ip_pools`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `sending_domains_name_unique` ON `sending_domains` (`name`);--> statement-breakpoint
CREATE TABLE `sending_node_usage` (
	`node_id` integer NOT NULL,
	`hour` integer NOT NULL,
	`count` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`node_id`, `hour`),
	FOREIGN KEY (`node_id`) REFERENCES `sending_nodes`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `sending_nodes` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`name` text NOT NULL,
	`kind` text NOT NULL,
	`pool_id` integer,
	`relay_host` text,
	`relay_port` integer,
	`relay_tls` text,
	`relay_username` text,
	`relay_password` text,
	`hourly_cap` integer,
	`daily_cap` integer,
	`is_default` integer DEFAULT false NOT NULL,
	`active` integer DEFAULT true NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`pool_id`) REFERENCES `ip_pools`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `sending_nodes_name_unique` ON `sending_nodes` (`name`);--> statement-breakpoint
CREATE TABLE `spin_tags` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`name` text NOT NULL,
	`alternatives` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `spin_tags_name_unique` ON `spin_tags` (`name`);--> statement-breakpoint
CREATE TABLE `template_versions` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`template_id` integer NOT NULL,
	`version` integer NOT NULL,
	`subject` text NOT NULL,
	`html` text,
	`text` text,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`template_id`) REFERENCES `templates`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `template_versions_template_version_unique` ON `template_versions` (`template_id`,`version`);--> statement-breakpoint
CREATE TABLE `templates` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`name` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`active_version_id` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
