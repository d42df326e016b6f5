CREATE TABLE `ip_warmups` (
	`ip_id` integer PRIMARY KEY NOT NULL,
	`started_at` integer NOT NULL,
	`schedule` text,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`ip_id`) REFERENCES `ips`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `provider_domains` (
	`domain` text PRIMARY KEY NOT NULL,
	`provider` text NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `shaping_states` (
	`provider` text NOT NULL,
	`ip` text NOT NULL,
	`state` text NOT NULL,
	`rate_per_minute` real,
	`hold_until` integer,
	`successes` integer DEFAULT 0 NOT NULL,
	`reason` text,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`provider`, `ip`)
);
--> statement-breakpoint
CREATE TABLE `warmup_usage` (
	`ip` text NOT NULL,
	`day` text NOT NULL,
	`provider` text NOT NULL,
	`count` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`ip`, `day`, `provider`)
);
