from services.answerer.main import main

main()
