DROP INDEX `message_recipients_due_idx`;--> statement-breakpoint
CREATE INDEX `message_recipients_due_idx` ON `message_recipients` (`next_attempt_at`) WHERE state IN ('scheduled', 'queued', 'deferred');--> statement-breakpoint
ALTER TABLE `messages` ADD `scheduled_at` integer;--> statement-breakpoint
ALTER TABLE `messages` ADD `sent_html` text;