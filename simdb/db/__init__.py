"""Where the database comes from and how simdb talks to it: DSNs, the embedded server, bridges."""
