from seq2seq.cli.app import main

if __name__ == "__main__":  # not when a worker process imports it
    main()
