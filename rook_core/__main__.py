from rook_core.cli import main

main()
