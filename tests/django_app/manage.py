"""The example project's manage.py (run from tests/: python -m django_app.manage ...)."""

import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "django_app.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
