"""Inputs: read files, folders and stdin, recognise formats by content, group them into nodes."""
