"""The Cython core of jsstore. Each module's .pxd is its map: read those first."""
