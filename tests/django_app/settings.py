"""Settings of the example project: PostgreSQL from SIMDB_DJANGO_DSN (the tests point it at a
fresh database of their own)."""

from __future__ import annotations

import os

from psycopg.conninfo import conninfo_to_dict

_dsn = conninfo_to_dict(os.environ.get("SIMDB_DJANGO_DSN", "postgresql://postgres@127.0.0.1:5432/articles"))

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": _dsn.get("dbname", "articles"),
        "USER": _dsn.get("user", ""),
        "PASSWORD": _dsn.get("password", ""),
        "HOST": _dsn.get("host", ""),
        "PORT": _dsn.get("port", ""),
    }
}
INSTALLED_APPS = ["django_app.articles"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
SECRET_KEY = "example-only"  # an example project, never deployed
