"""Op-support plugins (built-ins registered through the same entry point as third-party ones)."""
