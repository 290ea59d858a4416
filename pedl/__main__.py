from pedl.cli import main

main()
