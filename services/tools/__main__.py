from services.tools.main import main

main()
