"""Measurement: `simdb bench` (index and fingerprint figures beside same-run baselines), the two
modes scored on planted edits (evaluate), and `simdb calibrate` on the user's own documents."""
