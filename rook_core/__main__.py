from rook_core.console import main

main()
