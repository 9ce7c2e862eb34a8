"""gpuscout: GPU cloud offers, their price history, and the one that runs your job best."""
