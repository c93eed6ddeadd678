"""Memory and storage profiles for the system under test."""
