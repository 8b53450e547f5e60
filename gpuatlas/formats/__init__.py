"""Number formats that differ from Django's locale defaults (FORMAT_MODULE_PATH); the rest is Django's."""
