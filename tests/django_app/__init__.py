"""An example Django project using simdb.django (run by tests/faces/test_django.py)."""
