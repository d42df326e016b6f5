ALTER TABLE `messages` ADD `envelope_from` text;--> statement-breakpoint
ALTER TABLE `bridges` ADD `send_dsn` integer DEFAULT true NOT NULL;