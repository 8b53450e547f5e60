"""Writes of the watches app: creating and deleting watches (watches), evaluating them after a
write (evaluation), sending their alerts (delivery)."""
