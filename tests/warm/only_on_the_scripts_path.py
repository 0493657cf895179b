"""A module on the test scripts' sys.path (their folder) but not on a warm worker's: the worker cannot unpickle its objects."""


class OnlyHere:
    pass
