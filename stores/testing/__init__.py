"""Test helpers for vector stores: hypothesis strategies and the shared conformance suite."""
