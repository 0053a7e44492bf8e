"""``deploylens survey``: many models through export, validate, support and build, one row each."""
