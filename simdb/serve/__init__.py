"""`simdb serve`: a small web application to look at near-duplicates before dropping them.

Optional: `pip install 'simdb-pg[serve]'` brings Starlette, Jinja2, uvicorn and psycopg-pool.
The pages call the library (simdb.serve.review, simdb.index, simdb.index.texts) and only read.
"""

from simdb.serve.app import create_app, is_loopback, token_for

__all__ = ["create_app", "is_loopback", "token_for"]
