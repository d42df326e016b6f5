-- A counter that changes whenever anything that decides access changes: a key's secret,
-- role, status, limit, allowlist or deletion, or a role's permissions. The server caches
-- key identities and checks this one row per request, so edits from any code path or
-- process (the command line included) apply at the next request. Last-use bookkeeping
-- (last_used_at, last_used_ip) does not touch it.
INSERT INTO `system_state` (`key`, `value`, `updated_at`) VALUES ('access_version', '0', 0) ON CONFLICT(`key`) DO NOTHING;
--> statement-breakpoint
CREATE TRIGGER `api_keys_access_insert` AFTER INSERT ON `api_keys` BEGIN
  UPDATE `system_state` SET `value` = CAST(`value` AS INTEGER) + 1 WHERE `key` = 'access_version';
END;
--> statement-breakpoint
CREATE TRIGGER `api_keys_access_update` AFTER UPDATE OF `secret_hash`, `lookup_id`, `role_id`, `rate_limit`, `allowed_ips`, `status`, `deleted_at`, `name` ON `api_keys` BEGIN
  UPDATE `system_state` SET `value` = CAST(`value` AS INTEGER) + 1 WHERE `key` = 'access_version';
END;
--> statement-breakpoint
CREATE TRIGGER `api_keys_access_delete` AFTER DELETE ON `api_keys` BEGIN
  UPDATE `system_state` SET `value` = CAST(`value` AS INTEGER) + 1 WHERE `key` = 'access_version';
END;
--> statement-breakpoint
CREATE TRIGGER `roles_access_update` AFTER UPDATE OF `permissions` ON `roles` BEGIN
  UPDATE `system_state` SET `value` = CAST(`value` AS INTEGER) + 1 WHERE `key` = 'access_version';
END;
--> statement-breakpoint
CREATE TRIGGER `roles_access_delete` AFTER DELETE ON `roles` BEGIN
  UPDATE `system_state` SET `value` = CAST(`value` AS INTEGER) + 1 WHERE `key` = 'access_version';
END;
