ALTER TABLE `sending_domains` ADD `track_opens` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `sending_domains` ADD `track_clicks` integer DEFAULT false NOT NULL;