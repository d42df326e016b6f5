-- Keeps contact_counts exact: every insert, delete, and change of list or status of a
-- contact moves one count. Rows at zero are kept (a list's statuses are few).
CREATE TRIGGER `contacts_count_insert` AFTER INSERT ON `contacts` BEGIN
  INSERT INTO `contact_counts` (`list_id`, `status`, `n`) VALUES (NEW.`list_id`, NEW.`status`, 1)
    ON CONFLICT (`list_id`, `status`) DO UPDATE SET `n` = `n` + 1;
END;
--> statement-breakpoint
CREATE TRIGGER `contacts_count_delete` AFTER DELETE ON `contacts` BEGIN
  UPDATE `contact_counts` SET `n` = `n` - 1 WHERE `list_id` = OLD.`list_id` AND `status` = OLD.`status`;
END;
--> statement-breakpoint
CREATE TRIGGER `contacts_count_update` AFTER UPDATE OF `list_id`, `status` ON `contacts`
  WHEN OLD.`list_id` IS NOT NEW.`list_id` OR OLD.`status` IS NOT NEW.`status` BEGIN
  UPDATE `contact_counts` SET `n` = `n` - 1 WHERE `list_id` = OLD.`list_id` AND `status` = OLD.`status`;
  INSERT INTO `contact_counts` (`list_id`, `status`, `n`) VALUES (NEW.`list_id`, NEW.`status`, 1)
    ON CONFLICT (`list_id`, `status`) DO UPDATE SET `n` = `n` + 1;
END;
--> statement-breakpoint
-- A deleted list's contacts go by cascade (their delete triggers run); its count rows go here.
CREATE TRIGGER `lists_count_delete` AFTER DELETE ON `lists` BEGIN
  DELETE FROM `contact_counts` WHERE `list_id` = OLD.`id`;
END;
