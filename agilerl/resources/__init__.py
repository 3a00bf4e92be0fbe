"""What this machine and installation offer, asked before anything is allocated or
installed: the memory this process may still take (:mod:`.host_memory`), modules built
on torch's meta device to measure them (:mod:`.meta_device`), and the installed
distribution's name with its install hints (:mod:`.distribution`)."""
