"""The root-cause families of the ANR generator, one module each (those the Android
responsiveness study found, MobiCom 2020: WAM, lock contention, low memory, app defects)."""
