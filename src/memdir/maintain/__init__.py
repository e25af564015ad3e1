"""Maintenance jobs: each idempotent, each with a dry run, each safe to run from cron."""
