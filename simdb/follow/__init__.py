"""Keeping an attached index current with the application's table it follows."""
