"""Protocol extensions served next to a revision's methods."""
