-- Schema version 115: the SHA-256 of a webhook-triggered workflow's
-- secret (see the PostgreSQL migration 00115).
ALTER TABLE workflows ADD COLUMN webhook_secret_hash BLOB;
