import { notFound } from '../errors.ts';
import type { DocumentRepository } from '../storage/document-repository.ts';

export class DocumentService {
  readonly #documents: DocumentRepository;

  constructor(documents: DocumentRepository) {
    this.#documents = documents;
  }

  listSources(): Promise<string[]> {
    return this.#documents.listSources();
  }

  async deleteSource(source: string): Promise<void> {
    if (!(await this.#documents.deleteSource(source))) {
      throw notFound(`No document with source ${JSON.stringify(source)}`);
    }
  }
}
