from reviewbot.cli import main

main()
