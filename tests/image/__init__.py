"""The image, built and run as containers."""
