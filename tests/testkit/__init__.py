"""Helpers for the tests (sandboxes, scripted sessions, reply corpora, Ray jobs); shipped code
never imports them (tests/test_static.py checks that)."""
