CREATE TABLE `contact_count_pause` (
	`id` integer PRIMARY KEY NOT NULL
);
--> statement-breakpoint
DROP INDEX `contacts_created_idx`;--> statement-breakpoint
-- The insert trigger of 0003, now skipped while contact_count_pause has a row: a bulk
-- writer counts its own inserts, once per batch (src/modules/contacts/writer.ts, batch()).
DROP TRIGGER `contacts_count_insert`;
--> statement-breakpoint
CREATE TRIGGER `contacts_count_insert` AFTER INSERT ON `contacts` WHEN NOT EXISTS (SELECT 1 FROM `contact_count_pause`) BEGIN
  INSERT INTO `contact_counts` (`list_id`, `status`, `n`) VALUES (NEW.`list_id`, NEW.`status`, 1)
    ON CONFLICT (`list_id`, `status`) DO UPDATE SET `n` = `n` + 1;
END;
