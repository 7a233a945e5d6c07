"""Fixtures for the Trust-Score plugin: scripted-model rule files."""

from __future__ import annotations


