-- New contacts are counted by their writer (src/modules/contacts/writer.ts) in the inserting
-- transaction, once per statement or per import batch: the per-row insert trigger, even
-- paused, cost a fifth to a quarter of a bulk import's insert time (measured). The delete and
-- update triggers of 0003 stay.
DROP TRIGGER `contacts_count_insert`;
--> statement-breakpoint
DROP TABLE `contact_count_pause`;
