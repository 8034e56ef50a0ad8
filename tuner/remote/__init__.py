"""Remote staging: the SSH transport (`ssh`) and the target that uses it (`target`)."""
