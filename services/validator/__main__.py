from services.validator.main import main

main()
