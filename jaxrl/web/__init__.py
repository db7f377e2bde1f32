"""What a browser shows: the play page (`python -m jaxrl.play`) and the HTML replay's player, as files."""
