// Reading a message: show all, as text, copy.
