CREATE INDEX `events_recipient_idx` ON `events` (`recipient`,`created_at`) WHERE recipient IS NOT NULL;--> statement-breakpoint
CREATE INDEX `events_contact_idx` ON `events` (`contact_id`,`created_at`) WHERE contact_id IS NOT NULL;--> statement-breakpoint
CREATE INDEX `events_list_idx` ON `events` (`list_id`,`created_at`) WHERE list_id IS NOT NULL;--> statement-breakpoint
CREATE INDEX `events_broadcast_idx` ON `events` (`broadcast_id`,`created_at`) WHERE broadcast_id IS NOT NULL;--> statement-breakpoint
CREATE INDEX `events_bridge_idx` ON `events` (`bridge_id`,`created_at`) WHERE bridge_id IS NOT NULL;