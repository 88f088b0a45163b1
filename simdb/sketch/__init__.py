"""Pure sketches of documents: features, SimHash, MinHash and one-bit MinHash fingerprints."""
