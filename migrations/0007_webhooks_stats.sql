CREATE TABLE `stats_hourly` (
	`hour` integer NOT NULL,
	`kind` text NOT NULL,
	`dim` text NOT NULL,
	`dim_value` text NOT NULL,
	`count` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`dim`, `hour`, `dim_value`, `kind`)
);
--> statement-breakpoint
CREATE TABLE `webhook_attempts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`delivery_id` integer NOT NULL,
	`webhook_id` integer NOT NULL,
	`attempted_at` integer NOT NULL,
	`status` integer,
	`latency_ms` integer,
	`error` text,
	`response_snippet` text,
	FOREIGN KEY (`delivery_id`) REFERENCES `webhook_deliveries`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `webhook_attempts_webhook_idx` ON `webhook_attempts` (`webhook_id`,`id`);--> statement-breakpoint
CREATE INDEX `webhook_attempts_delivery_idx` ON `webhook_attempts` (`delivery_id`);--> statement-breakpoint
CREATE TABLE `webhook_deliveries` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`webhook_id` integer NOT NULL,
	`event_id` integer NOT NULL,
	`kind` text NOT NULL,
	`state` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer,
	`lease_until` integer,
	`last_status` integer,
	`last_error` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`finished_at` integer,
	FOREIGN KEY (`webhook_id`) REFERENCES `webhooks`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `webhook_deliveries_due_idx` ON `webhook_deliveries` (`next_attempt_at`) WHERE state = 'pending';--> statement-breakpoint
CREATE INDEX `webhook_deliveries_webhook_idx` ON `webhook_deliveries` (`webhook_id`,`id`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_event_idx` ON `webhook_deliveries` (`event_id`);--> statement-breakpoint
CREATE TABLE `webhooks` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`url` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`kinds` text NOT NULL,
	`secret` text NOT NULL,
	`previous_secret` text,
	`previous_secret_until` integer,
	`enabled` integer DEFAULT true NOT NULL,
	`disabled_reason` text,
	`disabled_at` integer,
	`consecutive_failures` integer DEFAULT 0 NOT NULL,
	`last_success_at` integer,
	`last_failure_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
