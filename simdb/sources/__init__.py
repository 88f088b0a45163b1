"""Where documents come from: files and folders, JSONL, CSV and stdin, and what a key may be."""
