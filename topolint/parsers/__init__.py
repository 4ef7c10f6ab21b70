"""Parsers: one module per input format, each turning a SourceFile into typed facts."""
