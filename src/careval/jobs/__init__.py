"""Jobs: one workflow job each, file in, file out (the library functions workflow/scripts call)."""
