"""An example Django project using simdb.django (run by tests/test_django.py)."""
