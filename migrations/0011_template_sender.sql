-- A template version may carry its sender and Reply-To, so the spec's dynamic template send
-- (to and variables only) has a From without the default_from setting (issue 13 item 13).
ALTER TABLE `template_versions` ADD `from_address` text;--> statement-breakpoint
ALTER TABLE `template_versions` ADD `reply_to` text;