"""The root-cause families of the ANR generator, one module each (spec 04)."""
